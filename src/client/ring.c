/*
 * ring.c -- picks the kind's ops by name and holds its state.
 */
#include "client/ring_int.h"

#include <stdlib.h>
#include <string.h>

static const struct ring_ops *const kinds[] = {&ring_ketama, &ring_modula, &ring_rendezvous,
                                                &ring_ch3, &ring_crc32, &ring_wch3,
                                                &ring_const_shard};
#define NKINDS (sizeof(kinds) / sizeof(kinds[0]))

struct ring {
    const struct ring_ops *ops;
    unsigned n;
    void *state;
};

struct ring *ring_create(const char *kind, const struct ring_server *servers, unsigned n,
                         const char **err) {
    const char *dummy;
    if (err == NULL)
        err = &dummy;
    *err = NULL;
    const struct ring_ops *ops = NULL;
    for (size_t i = 0; i < NKINDS; i++)
        if (strcmp(kinds[i]->name, kind) == 0)
            ops = kinds[i];
    if (ops == NULL) {
        *err = "unknown hash (ketama, modula, rendezvous, ch3, crc32, wch3 or constshard)";
        return NULL;
    }
    if (n == 0) {
        *err = "a pool needs at least one server";
        return NULL;
    }
    if (ops->max_servers != 0 && n > ops->max_servers) {
        *err = "too many servers for this hash";
        return NULL;
    }
    struct ring *r = malloc(sizeof(*r));
    if (r != NULL)
        r->state = ops->build != NULL ? ops->build(servers, n) : NULL;
    if (r == NULL || (ops->build != NULL && r->state == NULL)) {
        free(r);
        *err = "out of memory";
        return NULL;
    }
    r->ops = ops;
    r->n = n;
    return r;
}

void ring_destroy(struct ring **r) {
    if (r == NULL || *r == NULL)
        return;
    if ((*r)->ops->free != NULL)
        (*r)->ops->free((*r)->state);
    free(*r);
    *r = NULL;
}

unsigned ring_pick(const struct ring *r, const char *key, size_t len) {
    if (r->n == 1)
        return 0;           /* libmemcached asks no hash of a one-server pool either */
    return r->ops->pick(r->state, r->n, key, len);
}

unsigned ring_size(const struct ring *r) { return r->n; }

const char *ring_kind(const struct ring *r) { return r->ops->name; }

/* The kinds a pool may name: all but those that take a PoolRoute's weights. */
const char *ring_kind_at(unsigned i) {
    for (size_t k = 0; k < NKINDS; k++)
        if (!kinds[k]->route_only && i-- == 0)
            return kinds[k]->name;
    return NULL;
}

size_t ring_hash_stop(const char *key, size_t nkey, const char *p) {
    const char *end = key + nkey;
    while (p != NULL && end - p >= 3) {
        if (p[1] == '#' && p[2] == '|')
            return (size_t)(p - key);
        p = memchr(p + 1, '|', (size_t)(end - p - 1));
    }
    return nkey;
}
