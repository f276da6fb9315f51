/*
 * route_shard_split.c -- mcrouter's ShardSplitRoute (a PoolRoute's
 * "shard_splits", or {"type": "ShardSplitRoute", "destination": route,
 * "shard_splits": {...}}): a shard split in N copies, each its own key.
 *
 * A key names its shard as "prefix:SHARD:rest", SHARD ending in a digit
 * (mcrouter's getShardId).  A shard split in N > 1 has the copies
 * "prefix:SHARD:rest" (copy 0) and "prefix:SHARDxy:rest" (copy i > 0,
 * x = 'a' + (i - 1) % 26, y = 'a' + (i - 1) / 26).  A request goes to
 * the copy this host's id picks (host_id % N); a delete, with
 * fanout_deletes, to every copy, copy 0 answering and the others sent in
 * the background.  Keys of no split shard go on as they are.
 *
 * A split is N (deletes fan out), or {"new_split_size", "old_split_size"
 * (both 1 by default), "split_start" (unix time), "migration_period"
 * (seconds), "fanout_deletes" (false)}: the old size until split_start,
 * the new one after the period, and within it each host moving at its own
 * moment (its id % 16384 over 16384 as the fraction of the period).
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "client/client_int.h"
#include "client/route_build.h"
#include "protocol/mc_put.h"

#define SPLITS_MAX (26 * 26 + 1)   /* mcrouter's: more is cut to this */
#define HOST_MODULO 16384

struct split {
    char *shard;
    unsigned old_size, new_size;
    int64_t start, period;      /* unix seconds */
    bool fanout;                /* deletes to every copy */
};

struct shard_split {
    struct route r;
    struct split *v;            /* sorted by shard, for bsearch */
    unsigned n;
};

static const struct shard_split *ss(const struct route *r) {
    return (const struct shard_split *)r;
}

/* mcrouter's getShardId: the text between key's first two colons, ending in a digit. */
static bool shard_of(struct mc_span key, struct mc_span *shard) {
    const char *a = memchr(key.p, ':', key.len);
    if (a == NULL)
        return false;
    const char *start = a + 1, *end = key.p + key.len;
    const char *b = memchr(start, ':', (size_t)(end - start));
    if (b == NULL || b == start || b[-1] < '0' || b[-1] > '9')
        return false;
    *shard = (struct mc_span){start, (size_t)(b - start)};
    return true;
}

static int cmp_span(const void *k, const void *e) {
    const struct mc_span *s = k;
    const char *t = ((const struct split *)e)->shard;
    size_t n = strlen(t);
    int c = memcmp(s->p, t, s->len < n ? s->len : n);
    return c ? c : (s->len > n) - (s->len < n);
}

/* This host's number of copies of the split now. */
static unsigned size_now(const struct split *s, uint64_t host_id) {
    if (s->old_size == s->new_size)
        return s->new_size;
    int64_t now = (int64_t)time(NULL);
    if (now < s->start)
        return s->old_size;
    if (now >= s->start + s->period)
        return s->new_size;
    double point = (double)(now - s->start) / (double)s->period;
    return (double)(host_id % HOST_MODULO) / HOST_MODULO < point ? s->new_size : s->old_size;
}

/* Copy i's key into out: key[0..len) with copy i's two letters after the shard (at). */
static void split_key(char *out, const char *key, size_t len, size_t at, unsigned i) {
    memcpy(out, key, at);
    out[at] = (char)('a' + (i - 1) % 26);
    out[at + 1] = (char)('a' + (i - 1) / 26);
    memcpy(out + at + 2, key + at, len - at);
}

/* A request for copy i of the shard ending at shard_end in q's key. */
struct split_req {
    struct cl_req q;            /* first, so done() finds it */
    struct cl_req *parent;      /* NULL: a delete's background copy */
    char bytes[];               /* the routing prefix, then the key */
};

static void split_done(struct cl_req *q, int status, const struct msg_reply *rep) {
    struct split_req *c = (struct split_req *)q;
    struct cl_req *parent = c->parent;
    free(c);
    if (parent)
        parent->done(parent, status, rep);
}

/* q for copy i (> 0) of the shard ending at shard_end: answered to parent, or dropped. */
static void send_copy(const struct route *r, struct cellar *h, struct cl_req *q,
                      const char *shard_end, unsigned i, struct cl_req *parent) {
    size_t pre = q->m.prefix_len, n = q->m.key.len + 2, at = (size_t)(shard_end - q->m.key.p);
    if (n > MC_KEY_MAX) {
        if (parent) {
            static const char why[] = "ShardSplitRoute: key too long for a split";
            cl_answer_error(h, parent, CELLAR_ECLIENT, why, sizeof(why) - 1);
        }
        return;
    }
    struct split_req *c = malloc(sizeof(*c) + pre + n + (msg_carries_value(&q->m) && !parent
                                                          ? q->m.value.len : 0));
    if (c == NULL) {
        if (parent)
            parent->done(parent, CELLAR_ENOMEM, NULL);
        return;
    }
    *c = (struct split_req){.q = {.m = q->m, .done = split_done}, .parent = parent};
    char *p = c->bytes;             /* the routing prefix kept before the key */
    split_key(p, q->m.key.p - pre, pre + q->m.key.len, pre + at, i);
    c->q.m.key = (struct mc_span){p + pre, n};
    if (!parent && msg_carries_value(&q->m)) {    /* outlives q: its own value too */
        memcpy(p + pre + n, q->m.value.p, q->m.value.len);
        c->q.m.value.p = p + pre + n;
    }
    route_dispatch(r->children[0], h, &c->q);
}

static const struct split *split_of(const struct route *r, struct mc_span key,
                                    struct mc_span *shard) {
    if (!shard_of(key, shard))
        return NULL;
    return bsearch(shard, ss(r)->v, ss(r)->n, sizeof(struct split), cmp_span);
}

static void shard_split_dispatch(const struct route *r, struct cellar *h, struct cl_req *q) {
    struct mc_span shard;
    const struct split *s = msg_op_keyed(q->m.op) && q->m.op != MSG_META
                                ? split_of(r, q->m.key, &shard) : NULL;
    unsigned size = s ? size_now(s, h->cfg->host_id) : 1;
    if (size <= 1) {
        route_dispatch(r->children[0], h, q);
        return;
    }
    const char *end = shard.p + shard.len;
    if (q->m.op == MSG_DELETE && s->fanout) {
        for (unsigned i = 1; i < size; i++)
            send_copy(r, h, q, end, i, NULL);
        route_dispatch(r->children[0], h, q);
        return;
    }
    unsigned i = (unsigned)(h->cfg->host_id % size);
    if (i == 0)
        route_dispatch(r->children[0], h, q);
    else
        send_copy(r, h, q, end, i, q);
}

/* The copy a get goes to: its server. */
static int shard_split_server_of(const struct route *r, const struct cellar_config *cfg,
                                 const char *key, size_t nkey) {
    struct mc_span shard, k = {key, nkey};
    const struct split *s = split_of(r, k, &shard);
    unsigned size = s ? size_now(s, cfg->host_id) : 1, i = (unsigned)(cfg->host_id % size);
    if (size <= 1 || i == 0 || nkey + 2 > MC_KEY_MAX)
        return route_server_of(r->children[0], cfg, key, nkey);
    char split[MC_KEY_MAX + 3];
    split_key(split, key, nkey, (size_t)(shard.p + shard.len - key), i);
    return route_server_of(r->children[0], cfg, split, nkey + 2);
}

static void shard_split_label(const struct route *r, const struct cellar_config *cfg,
                              struct mc_put *w) {
    (void)cfg;
    MC_PUT_LIT(w, "(");
    for (unsigned i = 0; i < ss(r)->n; i++) {
        const struct split *s = &ss(r)->v[i];
        if (i)
            MC_PUT_LIT(w, ",");
        mc_put(w, s->shard, strlen(s->shard));
        MC_PUT_LIT(w, ":");
        if (s->old_size != s->new_size) {
            mc_put_u64(w, s->old_size);
            MC_PUT_LIT(w, "->");
        }
        mc_put_u64(w, s->new_size);
    }
    MC_PUT_LIT(w, ")");
}

static void shard_split_release(struct route *r) {
    struct shard_split *s = (struct shard_split *)r;
    for (unsigned i = 0; i < s->n; i++)
        free(s->v[i].shard);
    free(s->v);
    s->v = NULL;
}

static const struct route_ops shard_split_ops = {
    .name = "ShardSplitRoute",
    .dispatch = shard_split_dispatch,
    .server_of = shard_split_server_of,
    .label = shard_split_label,
    .release = shard_split_release,
};

static int by_shard(const void *a, const void *b) {
    return strcmp(((const struct split *)a)->shard, ((const struct split *)b)->shard);
}

/* A split's size at v[key] (absent: 1), 1 .. (cut to) SPLITS_MAX. */
static int split_size(struct rb *b, json_t *obj, const char *key, unsigned *out) {
    long long n;
    if (rb_get_int(b, obj, key, 1, INT64_MAX, 1, &n) < 0)
        return -1;
    *out = n > SPLITS_MAX ? SPLITS_MAX : (unsigned)n;
    return 0;
}

/* One split: N, or the object above. */
static int parse_split(struct rb *b, json_t *v, struct split *s) {
    if (json_is_integer(v)) {
        if (json_integer_value(v) < 1)
            return rb_fail(b, "a split is a size from 1");
        s->old_size = s->new_size = json_integer_value(v) > SPLITS_MAX
                                        ? SPLITS_MAX : (unsigned)json_integer_value(v);
        s->fanout = true;
        return 0;
    }
    if (!json_is_object(v))
        return rb_fail(b, "a split is a size or an object, not %s", rb_type_name(v));
    if (rb_check_keys(b, v, "old_split_size new_split_size split_start migration_period "
                            "fanout_deletes", "a split") < 0)
        return -1;
    long long start, period;
    if (split_size(b, v, "old_split_size", &s->old_size) < 0 ||
        split_size(b, v, "new_split_size", &s->new_size) < 0 ||
        rb_get_int(b, v, "split_start", 0, INT64_MAX / 2, 0, &start) < 0 ||
        rb_get_int(b, v, "migration_period", 0, INT64_MAX / 2, 0, &period) < 0)
        return -1;
    s->start = start;
    s->period = period;
    return rb_get_bool(b, v, "fanout_deletes", &s->fanout);
}

int rb_shard_splits(struct rb *b, json_t *splits, struct route *child, struct route **out) {
    size_t mark = rb_path_key(b, "shard_splits");
    if (!json_is_object(splits))
        return rb_fail(b, "expected an object of shard: split, not %s", rb_type_name(splits));
    size_t n = json_object_size(splits);
    struct split *v = calloc(n ? n : 1, sizeof(*v));
    if (v == NULL)
        return rb_nomem(b);
    unsigned k = 0;
    const char *shard;
    json_t *e;
    int rc = 0;
    json_object_foreach(splits, shard, e) {
        size_t m = rb_path_key(b, shard);
        if ((v[k].shard = strdup(shard)) == NULL) {
            rc = rb_nomem(b);
            break;
        }
        k++;
        if ((rc = parse_split(b, e, &v[k - 1])) < 0)
            break;
        rb_path_set(b, m);
    }
    if (rc == 0) {
        qsort(v, k, sizeof(*v), by_shard);
        struct shard_split *r = (struct shard_split *)route_make(
            b->cfg->routes, &shard_split_ops, sizeof(*r), &child, 1);
        if (r == NULL) {
            rc = rb_nomem(b);
        } else {
            r->v = v;
            r->n = k;
            *out = &r->r;
            rb_path_set(b, mark);
            return 0;
        }
    }
    for (unsigned i = 0; i < k; i++)
        free(v[i].shard);
    free(v);
    return rc;
}

/* {"type": "ShardSplitRoute", "destination": route, "shard_splits": {...}} */
static int build_shard_split(struct rb *b, const struct route_type *t, json_t *obj,
                             struct route **out) {
    (void)t;
    struct route *dest = NULL;
    json_t *splits = rb_need(b, obj, "shard_splits");
    if (splits == NULL || rb_build_key(b, obj, "destination", true, &dest) < 0)
        return -1;
    return rb_shard_splits(b, splits, dest, out);
}

const struct route_type route_type_shard_split = {
    .type = "ShardSplitRoute",
    .keys = "destination shard_splits",
    .route_keys = "destination",
    .map_keys = "",
    .pool_keys = "",
    .build = build_shard_split,
};
