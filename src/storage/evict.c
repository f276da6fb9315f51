#include "storage/evict.h"

#include <stddef.h>
#include <string.h>

static const struct evict_policy *const policies[] = {
    &evict_lru,
};

const struct evict_policy *evict_policy_find(const char *name) {
    if (name == NULL)
        return NULL;
    for (size_t i = 0; i < sizeof(policies) / sizeof(policies[0]); i++)
        if (strcmp(policies[i]->name, name) == 0)
            return policies[i];
    return NULL;
}
