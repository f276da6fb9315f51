/*
 * store_seg.h -- the segment back end's primitives (item_seg.c), as
 * store.h calls them.  Each does for a segment view what the store_*
 * operation of the same verb promises (store.h); item_seg.c's opening says
 * what a view is.  Nothing but store.h and item_seg.c includes this
 * header.  The locking contract is engine_int.h's.
 */
#ifndef CELLAR_STORAGE_STORE_SEG_H
#define CELLAR_STORAGE_STORE_SEG_H

#include "storage/engine_int.h"

bool segv_config_check(const struct engine_config *c, char *err, size_t errlen);
bool segv_create(struct engine *e, char *err, size_t errlen);
struct item *segv_lookup_locked(struct engine *e, const char *key, size_t nkey, uint64_t hv);
struct item *segv_keep_locked(struct engine *e, struct item *it);
struct item *segv_get_locked(struct engine *e, const char *key, size_t nkey, uint64_t hv,
                             struct engine_copy *cp, bool *generic);
bool segv_set_locked(struct engine *e, struct item *it, uint64_t hv, uint64_t cas);
struct item *segv_alloc(struct engine *e, const char *key, size_t nkey, uint32_t flags,
                        uint32_t exptime, uint32_t nbytes, enum engine_alloc_err *err);
void segv_free(struct engine *e, struct item *it);
void segv_prewrite(struct engine *e, struct item *it, uint64_t cas);
void segv_prewrite_drop(struct engine *e, struct item *it);
bool segv_link_locked(struct engine *e, struct item *it, uint64_t hv, uint64_t cas);
bool segv_replace_locked(struct engine *e, struct item *old, struct item *it, uint64_t hv,
                         uint64_t cas);
void segv_unlink_locked(struct engine *e, struct item *it, uint64_t hv);
bool segv_sync_locked(struct engine *e, struct item *it, uint64_t hv);
unsigned segv_step_locked(struct engine *e, unsigned budget);
void segv_dump_span(struct engine *e, unsigned part, unsigned nparts, uint64_t *lo,
                    uint64_t *hi);
bool segv_dump_step(struct engine *e, uint64_t *cursor, unsigned budget, engine_dump_fn fn,
                    void *arg);
bool segv_class_stats(struct engine *e, struct engine_class_stats *out);
void segv_stats(struct engine *e, struct engine_stats *out);

/* `slabs reassign` under storage=seg: the answer for its one class; nothing moves. */
enum engine_reassign segv_reassign(struct engine *e, int32_t src, int32_t dst);

#endif
