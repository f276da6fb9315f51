/*
 * route_types.c -- every route type the JSON configuration may name, in
 * one table: each kind's file defines its struct route_type (route_build.h),
 * and a new kind is one file plus one line here.
 */
#include <string.h>

#include "client/route_build.h"

extern const struct route_type route_type_pool, route_type_failover,
    route_type_failover_exptime, route_type_miss_failover, route_type_all_sync,
    route_type_all_async, route_type_all_initial, route_type_latest,
    route_type_operation_selector, route_type_prefix_policy, route_type_prefix_selector,
    route_type_warm_up, route_type_null, route_type_dev_null, route_type_error,
    route_type_modify_exptime, route_type_all_fastest, route_type_all_majority,
    route_type_l1l2, route_type_hash, route_type_migrate, route_type_shadow,
    route_type_modify_key, route_type_random, route_type_big_value,
    route_type_salted_failover, route_type_host_id, route_type_shard_split,
    route_type_latency;

static const struct route_type *const types[] = {
    &route_type_pool,               /* route_pool.c */
    &route_type_failover,           /* route_failover.c */
    &route_type_failover_exptime,
    &route_type_salted_failover,
    &route_type_miss_failover,
    &route_type_latest,
    &route_type_host_id,
    &route_type_all_sync,           /* route_all.c */
    &route_type_all_async,
    &route_type_all_initial,
    &route_type_all_fastest,
    &route_type_all_majority,
    &route_type_operation_selector, /* route_selector.c */
    &route_type_prefix_policy,
    &route_type_prefix_selector,
    &route_type_warm_up,            /* route_warm_up.c */
    &route_type_null,               /* route_null.c */
    &route_type_dev_null,
    &route_type_error,              /* route_error.c */
    &route_type_modify_exptime,     /* route_modify.c */
    &route_type_l1l2,               /* route_l1l2.c */
    &route_type_hash,               /* route_hash.c */
    &route_type_migrate,            /* route_migrate.c */
    &route_type_shadow,             /* route_shadow.c */
    &route_type_modify_key,         /* route_modify_key.c */
    &route_type_random,             /* route_random.c */
    &route_type_big_value,          /* route_big_value.c */
    &route_type_shard_split,        /* route_shard_split.c */
    &route_type_latency,            /* route_latency.c */
};

const struct route_type *route_type_find(const char *type, size_t len) {
    for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++)
        if (strlen(types[i]->type) == len && memcmp(types[i]->type, type, len) == 0)
            return types[i];
    return NULL;
}
