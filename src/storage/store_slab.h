/*
 * store_slab.h -- the slab back end's primitives (item.c), as store.h
 * calls them.  Each does for a slab item what the store_* operation of the
 * same verb promises (store.h); nothing but store.h and item.c includes
 * this header.  The locking contract is engine_int.h's.
 */
#ifndef CELLAR_STORAGE_STORE_SLAB_H
#define CELLAR_STORAGE_STORE_SLAB_H

#include "storage/engine_int.h"

bool item_create(struct engine *e, char *err, size_t errlen);
struct item *item_alloc(struct engine *e, const char *key, size_t nkey, uint32_t flags,
                        uint32_t exptime, uint32_t nbytes, enum engine_alloc_err *err);
void item_free(struct engine *e, struct item *it);
bool item_link_locked(struct engine *e, struct item *it, uint64_t hv, uint64_t cas);
void item_unlink_locked(struct engine *e, struct item *it, uint64_t hv, enum unlink_why why);
bool item_replace_locked(struct engine *e, struct item *old, struct item *it, uint64_t hv,
                         uint64_t cas);
void item_hit_locked(struct engine *e, struct item *it);
unsigned item_step_locked(struct engine *e, unsigned budget);
void item_lru_temp(struct engine *e, int32_t ttl);
enum engine_crawl_result item_crawl_request_locked(struct engine *e, uint64_t classes);
void item_dump_span(struct engine *e, unsigned part, unsigned nparts, uint64_t *lo,
                    uint64_t *hi);
bool item_dump_step(struct engine *e, uint64_t *cursor, unsigned budget, engine_dump_fn fn,
                    void *arg);
bool item_class_stats(struct engine *e, unsigned id, struct engine_class_stats *out);
void item_stats(struct engine *e, struct engine_stats *out);

/* item_move.c: the page mover */
enum engine_reassign item_move_request(struct engine *e, int32_t src, int32_t dst);
unsigned item_move_step_locked(struct engine *e, unsigned budget);
void item_move_set(struct engine *e, int mode, double ratio, unsigned window);
void item_move_stats(struct engine *e, struct engine_stats *out);

#endif
