/*
 * idmap.c -- see idmap.h.  Keys are mixed before probing, since trace ids
 * are often small consecutive integers; the table keeps load under 1/2.
 * Id UINT64_MAX marks an empty slot, so that one id is stored on the side.
 */
#include "tools/sim/idmap.h"

#include <stdlib.h>

#define EMPTY UINT64_MAX

struct idmap {
    uint64_t *key, *val;
    size_t mask, count;
    bool has_max;               /* id UINT64_MAX present */
    uint64_t max_val;
};

static uint64_t mix(uint64_t x) {
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ULL;
    x ^= x >> 33;
    return x;
}

static bool alloc_table(struct idmap *m, size_t slots) {
    m->key = malloc(slots * sizeof(uint64_t));
    m->val = malloc(slots * sizeof(uint64_t));
    if (m->key == NULL || m->val == NULL) {
        free(m->key);
        free(m->val);
        return false;
    }
    for (size_t i = 0; i < slots; i++)
        m->key[i] = EMPTY;
    m->mask = slots - 1;
    return true;
}

struct idmap *idmap_create(size_t expect) {
    struct idmap *m = calloc(1, sizeof(*m));
    size_t slots = 64;
    while (slots < expect * 2)
        slots <<= 1;
    if (m != NULL && !alloc_table(m, slots)) {
        free(m);
        m = NULL;
    }
    return m;
}

void idmap_destroy(struct idmap **mp) {
    struct idmap *m = *mp;
    if (m == NULL)
        return;
    free(m->key);
    free(m->val);
    free(m);
    *mp = NULL;
}

size_t idmap_count(const struct idmap *m) { return m->count; }

static size_t find(const struct idmap *m, uint64_t id) {
    size_t i = mix(id) & m->mask;
    while (m->key[i] != EMPTY && m->key[i] != id)
        i = (i + 1) & m->mask;
    return i;
}

static bool grow(struct idmap *m) {
    uint64_t *okey = m->key, *oval = m->val;
    size_t oslots = m->mask + 1;
    if (!alloc_table(m, oslots * 2)) {
        m->key = okey, m->val = oval;
        return false;
    }
    for (size_t i = 0; i < oslots; i++)
        if (okey[i] != EMPTY) {
            size_t j = find(m, okey[i]);
            m->key[j] = okey[i];
            m->val[j] = oval[i];
        }
    free(okey);
    free(oval);
    return true;
}

uint64_t *idmap_get(const struct idmap *m, uint64_t id) {
    if (id == EMPTY)
        return m->has_max ? (uint64_t *)&m->max_val : NULL;
    size_t i = find(m, id);
    return m->key[i] == EMPTY ? NULL : &m->val[i];
}

uint64_t *idmap_put(struct idmap *m, uint64_t id, uint64_t dflt, bool *fresh) {
    bool dummy;
    if (fresh == NULL)
        fresh = &dummy;
    *fresh = false;
    if (id == EMPTY) {
        if (!m->has_max) {
            m->has_max = true;
            m->max_val = dflt;
            m->count++;
            *fresh = true;
        }
        return &m->max_val;
    }
    if ((m->count + 1) * 2 > m->mask + 1 && !grow(m))
        return NULL;
    size_t i = find(m, id);
    if (m->key[i] == EMPTY) {
        m->key[i] = id;
        m->val[i] = dflt;
        m->count++;
        *fresh = true;
    }
    return &m->val[i];
}
