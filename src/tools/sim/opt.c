/*
 * opt.c -- Belady's MIN (see opt.h).
 *
 * A backward pass gives each request the position of the next request for
 * the same object (NEVER when there is none).  The forward pass keeps the
 * resident objects in a max-heap by next use.  A hit changes an object's
 * next use; rather than finding it in the heap, a new entry is pushed and
 * the old one goes stale: an entry counts only while it matches the
 * object's current next use (held in a map), and the heap is compacted
 * when stale entries outnumber live ones.
 */
#include "tools/sim/opt.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "tools/sim/idmap.h"

#define NEVER UINT64_MAX

struct entry {
    uint64_t next, id;
};

struct heap {
    struct entry *e;
    size_t n, cap;
};

static void sift_up(struct heap *h, size_t i) {
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (h->e[p].next >= h->e[i].next)
            break;
        struct entry x = h->e[p];
        h->e[p] = h->e[i];
        h->e[i] = x;
        i = p;
    }
}

static void sift_down(struct heap *h, size_t i) {
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < h->n && h->e[l].next > h->e[m].next)
            m = l;
        if (r < h->n && h->e[r].next > h->e[m].next)
            m = r;
        if (m == i)
            break;
        struct entry x = h->e[m];
        h->e[m] = h->e[i];
        h->e[i] = x;
        i = m;
    }
}

static bool push(struct heap *h, uint64_t next, uint64_t id) {
    if (h->n == h->cap) {
        size_t cap = h->cap ? h->cap * 2 : 1024;
        struct entry *e = realloc(h->e, cap * sizeof(*e));
        if (e == NULL)
            return false;
        h->e = e;
        h->cap = cap;
    }
    h->e[h->n] = (struct entry){next, id};
    sift_up(h, h->n++);
    return true;
}

static void pop(struct heap *h) {
    h->e[0] = h->e[--h->n];
    sift_down(h, 0);
}

/* The resident map stores next use + 1; 0 means not resident. */
static bool live(const struct idmap *res, const struct entry *x) {
    const uint64_t *v = idmap_get(res, x->id);
    return v != NULL && *v == x->next + 1;
}

static void compact(struct heap *h, const struct idmap *res) {
    size_t k = 0;
    for (size_t i = 0; i < h->n; i++)
        if (live(res, &h->e[i]))
            h->e[k++] = h->e[i];
    h->n = k;
    for (size_t i = k / 2 + 1; i-- > 0;)
        sift_down(h, i);
}

int opt_run(const struct trace *t, uint64_t capacity, struct replay_result *r, char *err,
            size_t errlen) {
    *r = (struct replay_result){0};
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    uint64_t *next = malloc(t->n * sizeof(uint64_t));
    struct idmap *seen = idmap_create(t->unique);
    struct idmap *res = idmap_create(capacity);
    struct heap h = {0};
    int rc = -1;
    if (next == NULL || seen == NULL || res == NULL)
        goto oom;
    for (size_t i = t->n; i-- > 0;) {
        if (t->req[i].op != TRACE_GET)
            continue;
        uint64_t *v = idmap_put(seen, t->req[i].id, NEVER, NULL);
        if (v == NULL)
            goto oom;
        next[i] = *v;
        *v = i;
    }
    idmap_destroy(&seen);
    uint64_t count = 0;
    for (size_t i = 0; i < t->n; i++) {
        const struct trace_req *q = &t->req[i];
        if (q->op != TRACE_GET)
            continue;
        r->gets++;
        r->get_bytes += q->size;
        uint64_t *v = idmap_put(res, q->id, 0, NULL);
        if (v == NULL)
            goto oom;
        if (*v != 0) {
            *v = next[i] + 1;
            if (next[i] != NEVER && !push(&h, next[i], q->id))
                goto oom;
            if (next[i] == NEVER) {     /* never needed again: let it go */
                *v = 0;
                count--;
            }
            goto maybe_compact;
        }
        r->misses++;
        r->miss_bytes += q->size;
        if (next[i] == NEVER || capacity == 0)
            continue;
        while (h.n > 0 && !live(res, &h.e[0]))
            pop(&h);
        if (count >= capacity) {
            if (h.e[0].next <= next[i])
                continue;               /* the newcomer is needed last: skip it */
            uint64_t *old = idmap_get(res, h.e[0].id);
            *old = 0;
            pop(&h);
            count--;
        }
        v = idmap_get(res, q->id);
        *v = next[i] + 1;
        if (!push(&h, next[i], q->id))
            goto oom;
        count++;
    maybe_compact:
        if (h.n > 2 * capacity + 1024)
            compact(&h, res);
    }
    r->items = count;
    clock_gettime(CLOCK_MONOTONIC, &t1);
    r->seconds = (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) * 1e-9;
    rc = 0;
    goto out;
oom:
    snprintf(err, errlen, "OPT: out of memory");
out:
    free(next);
    free(h.e);
    idmap_destroy(&seen);
    idmap_destroy(&res);
    return rc;
}
