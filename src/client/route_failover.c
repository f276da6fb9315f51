/*
 * route_failover.c -- the routes that try children one after another:
 *
 *   FailoverRoute             children in order until one answers without
 *                             a failover error (cl_failover_error)
 *   FailoverWithExptimeRoute  the same; from the second child on, writes
 *                             carry an exptime capped at failover_exptime:
 *                             the paper's gutter pool, whose entries must
 *                             expire soon since nothing invalidates them
 *   MissFailoverRoute         reads and deletes: in order until a hit (a miss
 *                             moves on too); anything else goes to the first
 *                             child; with return_best_on_error, a miss met on
 *                             the way is the answer rather than a later error
 *   LatestRoute               a replica picked by the handle's host id,
 *                             then up to failover_count more, in order
 *                             (HostIdRoute: that replica alone)
 *
 *   dispatch --> child[start] --done--> answered? --yes--> parent->done
 *                     ^                    | no, and children left
 *                     +--- child[next] <---+
 *
 * One struct seq per request in flight, freed before the parent hears.
 * When every child failed, the parent gets the last one's answer.  Each
 * sending on to a later child counts one in the handle's failovers.
 */
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "client/client_int.h"
#include "client/route_failover.h"
#include "protocol/mc_put.h"

#define THIRTY_DAYS 2592000
static void limiter_bump(struct limiter *l) {
    pthread_mutex_lock(&l->mu);
    l->reqs++;
    pthread_mutex_unlock(&l->mu);
}

static bool limiter_allow(struct limiter *l) {
    pthread_mutex_lock(&l->mu);
    uint64_t t = l->tokens + (l->reqs - l->last) * l->rate;
    l->tokens = t < l->burst ? t : l->burst;
    l->last = l->reqs;
    bool ok = l->tokens >= MICRO;
    if (ok)
        l->tokens -= MICRO;
    pthread_mutex_unlock(&l->mu);
    return ok;
}

static const char *const fs_names[FS_COUNT] = {
    "failover_policy_result_error", "failover_policy_tko_error", "failover_num_collisions",
    "failover_num_failed_domain_collisions", "failover_all_failed_count",
    "failover_rate_limited",
};

/* One request's walk under a DeterministicOrderPolicy (mcrouter's iterator). */
struct walk {
    uint32_t salt, id, index;   /* salt last hashed; picks made; the child picked */
    uint32_t tries;             /* answers that count against max_error_tries */
    uint32_t collisions, domain_collisions, nfailed;
    uint32_t *failed;           /* the failure domains of servers met marked down */
    uint64_t used[];            /* a bit per child: asked, or not to be asked */
};

static uint64_t pairs_put(struct pairs *p, uint64_t token, unsigned child) {
    pthread_mutex_lock(&p->mu);
    uint32_t n = p->next++;
    uint64_t ours = PAIR_MAGIC << 32 | n;
    p->slot[n % PAIR_SLOTS] = (struct pair){ours, token, child, (int64_t)time(NULL) + PAIR_TTL_S};
    pthread_mutex_unlock(&p->mu);
    return ours;
}

/* The pair of the token a lease-set brings back, or false. */
static bool pairs_get(struct pairs *p, uint64_t ours, struct pair *out) {
    if (ours >> 32 != PAIR_MAGIC)
        return false;
    pthread_mutex_lock(&p->mu);
    *out = p->slot[(uint32_t)ours % PAIR_SLOTS];
    pthread_mutex_unlock(&p->mu);
    return out->ours == ours && out->until >= (int64_t)time(NULL);
}

static const struct failover *fo(const struct route *r) {
    return (const struct failover *)r;
}

struct seq {
    struct cl_req q;            /* the child request: first, so done() finds the seq */
    struct cl_req *parent;
    const struct route *r;
    struct cellar *h;
    unsigned start, tried, limit;   /* limit: children to try, at most */
    unsigned at;                    /* the child now asked */
    bool missed;                    /* MissFailoverRoute: a child said it has none */
    uint64_t used;                  /* LeastFailuresPolicy: the children asked */
    char *tagged;                   /* failover_tag's key, made at the first failover */
    struct walk *w;                 /* DeterministicOrderPolicy's, from the first failover */
    bool last;                      /* the child now asked is the last: its answer is not
                                       looked at, as mcrouter's walk */
};

_Static_assert(sizeof(struct seq) <= CL_BLOCK, "a seq fits a handle's block");

int64_t cl_cap_exptime(int64_t exptime, int cap) {
    if (exptime < 0)
        return exptime;
    int64_t left = exptime;
    if (exptime > THIRTY_DAYS)
        left = exptime - (int64_t)time(NULL);
    return (exptime == 0 || left > cap) ? cap : exptime;
}

/* The failover_errors name of a status (0: not an error it knows). */
static unsigned error_bit(int status) {
    switch (status) {
    case CELLAR_EDOWN: return FO_TKO;
    case CELLAR_ECONNECT: return FO_CONNECT;
    case CELLAR_ETIMEDOUT: return FO_TIMEOUT;
    case CELLAR_ESERVER:
    case CELLAR_EPROTO:
    case CELLAR_ECLOSED: return FO_REMOTE;
    case CELLAR_ENOMEM: return FO_LOCAL;
    default: return 0;
    }
}

/* Which of failover_errors' lists op's request follows. */
static enum fo_class class_of(enum msg_op op) {
    if (cl_op_reads(op))
        return FO_GETS;
    return op == MSG_DELETE ? FO_DELETES : FO_UPDATES;
}

/* Does this answer send the request on to the next child? */
static bool moves_on(const struct seq *s, int status) {
    const struct failover *f = fo(s->r);
    if (f->custom ? (f->errors[class_of(s->parent->m.op)] & error_bit(status)) != 0
                  : cl_failover_error(status))
        return true;
    return f->on_miss && status == CELLAR_NOT_FOUND;
}

static void seq_done(struct cl_req *q, int status, const struct msg_reply *rep);

/* failover_tag: the key, when it has a "|#|" and room, with ":failover=1" after it. */
static void tag_key(struct seq *s) {
    static const char tag[] = ":failover=1";
    struct mc_span k = s->q.m.key;
    if (!msg_op_keyed(s->q.m.op) || s->q.m.op == MSG_META || k.len < 3 ||
        k.len + sizeof(tag) - 1 > MC_KEY_MAX || memmem(k.p, k.len, "|#|", 3) == NULL)
        return;
    if (s->tagged == NULL) {
        if ((s->tagged = malloc(k.len + sizeof(tag) - 1)) == NULL)
            return;             /* it is always safe not to tag, as mcrouter says */
        memcpy(s->tagged, k.p, k.len);
        memcpy(s->tagged + k.len, tag, sizeof(tag) - 1);
    }
    s->q.m.key = (struct mc_span){s->tagged, k.len + sizeof(tag) - 1};
    s->q.m.prefix_len = 0;
}

/* LeastFailuresPolicy's next child: the first always, then the one with the fewest errors. */
static unsigned least_failures(const struct seq *s) {
    const struct failover *f = fo(s->r);
    if (s->tried == 0)
        return 0;
    unsigned best = 0, fewest = UINT_MAX;
    for (unsigned i = 1; i < s->r->nchildren; i++) {
        unsigned n = atomic_load_explicit(&f->fails[i], memory_order_relaxed);
        if (!(s->used & (1ull << i)) && n < fewest) {
            best = i;
            fewest = n;
        }
    }
    return best;
}

static void stat_add(const struct route *r, int which, uint64_t n) {
    atomic_fetch_add_explicit(&((struct failover *)r)->stat[which], n, memory_order_relaxed);
}

static void seq_send(struct seq *s) {
    const struct route *r = s->r;
    unsigned i = s->w ? s->w->index
                      : fo(r)->fails ? least_failures(s) : (s->start + s->tried) % r->nchildren;
    s->at = i;
    s->used |= 1ull << (i & 63);
    s->q = (struct cl_req){.m = s->parent->m, .done = seq_done};
    if (s->tried > 0) {
        cl_count(&s->h->failovers, 1);
        int cap = fo(r)->exptime;
        if (cap >= 0 && cl_op_sets_exptime(s->q.m.op))
            s->q.m.exptime = cl_cap_exptime(s->q.m.exptime, cap);
        if (fo(r)->tag)
            tag_key(s);
    }
    s->tried++;
    route_dispatch(r->children[i], s->h, &s->q);
}

/* ---- DeterministicOrderPolicy's walk ---- */

static bool bit(const uint64_t *v, unsigned i) {
    return (v[i / 64] >> (i % 64)) & 1;
}

static void bit_set(uint64_t *v, unsigned i) {
    v[i / 64] |= 1ull << (i % 64);
}

/* The failure domain of the server child i sends the key to. */
static uint32_t server_domain(const struct seq *s, unsigned i) {
    const struct cellar_config *cfg = s->h->cfg;
    int sv = route_server_of(s->r->children[i], cfg, s->parent->m.key.p, s->parent->m.key.len);
    return sv >= 0 ? cfg->servers[sv].failure_domain : 0;
}

/* ... as learnt the first time (mcrouter's memo, shared by every request). */
static uint32_t child_domain(const struct seq *s, unsigned i) {
    _Atomic uint32_t *memo = &fo(s->r)->det->domain_of[i];
    uint32_t dom = atomic_load_explicit(memo, memory_order_relaxed);
    if (dom == 0 && (dom = server_domain(s, i)) != 0)
        atomic_store_explicit(memo, dom, memory_order_relaxed);
    return dom;
}

static bool domain_failed(const struct walk *w, uint32_t dom) {
    for (uint32_t k = 0; k < w->nfailed; k++)
        if (w->failed[k] == dom)
            return true;
    return false;
}

/* The child asked now (s->at) was found marked down: its domain is failed. */
static void det_down(struct seq *s) {
    const struct det *d = fo(s->r)->det;
    struct walk *w = s->w;
    if (!d->domains)
        return;
    uint32_t dom = s->at > 0 ? child_domain(s, s->at) : server_domain(s, 0);
    if (dom != 0 && !domain_failed(w, dom))
        w->failed[w->nfailed++] = dom;
}

/*
 * The walk's next pick (mcrouter's increment()): the salt counts up and
 * the key with it is hashed until a child not asked (nor in a failed
 * domain, for the first 75 tries) comes up, or 100 tries.
 */
static void det_next(struct seq *s) {
    const struct det *d = fo(s->r)->det;
    struct walk *w = s->w;
    const struct cellar_config *cfg = s->h->cfg;
    unsigned n = s->r->nchildren;
    if (w->id == 0) {
        bit_set(w->used, 0);
        if (!d->ignore_normal) {
            /* the server the first child's pool chose, by its place in that pool */
            int sv = route_server_of(s->r->children[0], cfg, s->parent->m.key.p,
                                     s->parent->m.key.len);
            unsigned normal = sv >= 0 ? (unsigned)sv - cfg->pools[cfg->servers[sv].pool].first
                                      : 0;
            if (normal + 1 < n)
                bit_set(w->used, normal + 1);
        }
    }
    const char *key = s->parent->m.key.p;
    size_t nkey = cl_hash_key(cfg, key, s->parent->m.key.len);
    char buf[MC_KEY_MAX + 3 + 12];
    if (nkey > MC_KEY_MAX + 3)
        nkey = MC_KEY_MAX + 3;
    memcpy(buf, key, nkey);
    uint32_t attempts = 0;
    bool failed;
    do {
        w->salt++;
        int len = snprintf(buf + nkey, 12, "%u", w->salt);
        w->index = ring_pick(d->ring, buf, nkey + (size_t)len);
        failed = d->domains && attempts <= 75 && domain_failed(w, child_domain(s, w->index));
        if (failed)
            w->domain_collisions++;
        else
            w->collisions++;
    } while ((bit(w->used, w->index) || failed) && attempts++ < 100);
    w->collisions--;
    bit_set(w->used, w->index);
    w->id++;
}

/* The walk, made at the first failover; NULL when out of memory. */
static struct walk *walk_new(const struct seq *s) {
    size_t words = (s->r->nchildren + 63) / 64;
    struct walk *w = calloc(1, sizeof(*w) + words * sizeof(uint64_t) +
                                   (s->limit + 1) * sizeof(uint32_t));
    if (w == NULL)
        return NULL;
    w->salt = 1;
    w->failed = (uint32_t *)(w->used + words);
    return w;
}

/*
 * mcrouter's processReply: is this answer the request's (true), or does
 * the walk go on?  Counts the error, takes a token of failover_limit
 * unless the server was marked down or refused the connection, counts a try.
 */
static bool answered(struct seq *s, int status) {
    const struct failover *f = fo(s->r);
    if (!moves_on(s, status))
        return true;
    /* marked down, or refused: mcrouter's TKO and hard TKO, no work done */
    bool tko = status == CELLAR_EDOWN || status == CELLAR_ECONNECT;
    if (f->counts && status < 0)
        stat_add(s->r, tko ? FS_TKO_ERROR : FS_RESULT_ERROR, 1);
    if (tko) {
        if (s->w)
            det_down(s);
        return false;
    }
    if (f->limit && !limiter_allow(f->limit)) {
        if (f->counts)
            stat_add(s->r, FS_RATE_LIMITED, 1);
        return true;
    }
    if (s->w && !(f->det->exclude & error_bit(status)))
        s->w->tries++;
    return false;
}

/*
 * After an answer that moves on: is there a child to ask next (s->at set
 * up for seq_send, s->last when its answer will not be looked at)?  *end
 * is set when the walk ran out of children, rather than of error tries.
 */
static bool next_child(struct seq *s, bool *end) {
    const struct det *d = fo(s->r)->det;
    *end = false;
    if (d == NULL) {
        if (s->tried >= s->limit) {
            *end = true;
            return false;
        }
        s->last = s->tried + 1 == s->limit;
        return true;
    }
    struct walk *w = s->w;
    det_next(s);
    if (s->tried == 1 && w->id == s->limit) {
        *end = true;            /* max_tries 1: only the first */
        return false;
    }
    if (w->tries >= d->max_error_tries)
        return false;
    s->last = w->id + 1 == s->limit;
    return true;
}

static void seq_done(struct cl_req *q, int status, const struct msg_reply *rep) {
    struct seq *s = (struct seq *)q;
    const struct failover *f = fo(s->r);
    s->missed |= status == CELLAR_NOT_FOUND;
    if (f->fails) {
        _Atomic unsigned *n = &f->fails[s->at];
        if (status < 0)
            atomic_fetch_add_explicit(n, 1, memory_order_relaxed);
        else
            atomic_store_explicit(n, 0, memory_order_relaxed);
    }
    bool end = s->last, walked = s->last;
    if (f->det && !s->last && s->w == NULL && moves_on(s, status) &&
        (s->w = walk_new(s)) == NULL) {
        status = CELLAR_ENOMEM;         /* no walk: answered so, not walked on */
        rep = NULL;
    } else if (!s->last) {
        if (!answered(s, status)) {
            if (next_child(s, &end)) {
                seq_send(s);
                return;
            }
            walked = !end;      /* out of error tries */
        }
    }
    if (f->counts && end && status < 0)
        stat_add(s->r, FS_ALL_FAILED, 1);
    if (s->w && walked && f->counts) {
        stat_add(s->r, FS_COLLISIONS, s->w->collisions);
        stat_add(s->r, FS_DOMAIN_COLLISIONS, s->w->domain_collisions);
    }
    struct cl_req *parent = s->parent;
    bool best_miss = s->missed && status < 0 && f->best_on_error;
    struct msg_reply paired;
    /* (a won token of 1, a fresh memcached's first cas, would read as mcrouter's
       "hot miss": paired too) */
    if (f->pairs && parent->m.op == MSG_LEASE_GET && rep && rep->won &&
        (s->at > 0 || rep->cas <= 1 || rep->cas >> 32 == PAIR_MAGIC)) {
        paired = *rep;
        paired.cas = pairs_put(f->pairs, rep->cas, s->at);
        rep = &paired;
    }
    free(s->tagged);
    free(s->w);
    cl_block_put(s->h, s);
    if (best_miss)
        cl_answer_null(parent);     /* the miss met on the way, not this error */
    else
        parent->done(parent, status, rep);
}

static void seq_dispatch(const struct route *r, struct cellar *h, struct cl_req *q,
                         unsigned start, unsigned limit) {
    if (r->nchildren == 0) {
        cl_answer_null(q);
        return;
    }
    struct seq *s = cl_block_get(h);
    if (s == NULL) {
        q->done(q, CELLAR_ENOMEM, NULL);
        return;
    }
    *s = (struct seq){.parent = q, .r = r, .h = h, .start = start, .limit = limit};
    seq_send(s);
}

static void pair_done(struct cl_req *q, int status, const struct msg_reply *rep) {
    cl_child_end((struct cl_child *)q, status, rep);
}

/* A lease-set under enable_lease_pairing: to the child its lease came from. */
static void lease_set_paired(const struct route *r, struct cellar *h, struct cl_req *q) {
    struct pair p;
    if (!pairs_get(fo(r)->pairs, q->m.cas, &p)) {
        route_dispatch(r->children[0], h, q);   /* not through a failover: no failing over */
        return;
    }
    if (p.child >= r->nchildren) {
        static const char why[] = "LeaseSet failover destination out-of-range.";
        cl_answer_error(h, q, CELLAR_ESERVER, why, sizeof(why) - 1);
        return;
    }
    struct cl_child *c = cl_child_get(h, r, q, pair_done);
    if (c == NULL)
        return;
    c->q.m.cas = p.token;
    route_dispatch(r->children[p.child], h, &c->q);
}

static void failover_dispatch(const struct route *r, struct cellar *h, struct cl_req *q) {
    if (fo(r)->pairs && q->m.op == MSG_LEASE_SET) {
        lease_set_paired(r, h, q);
        return;
    }
    if (fo(r)->limit)
        limiter_bump(fo(r)->limit);
    unsigned tries = fo(r)->max_tries;
    seq_dispatch(r, h, q, 0, tries && tries < r->nchildren ? tries : r->nchildren);
}

static void miss_failover_dispatch(const struct route *r, struct cellar *h, struct cl_req *q) {
    bool walks = cl_op_reads(q->m.op) || q->m.op == MSG_DELETE;
    seq_dispatch(r, h, q, 0, walks ? r->nchildren : 1);
}

static void latest_dispatch(const struct route *r, struct cellar *h, struct cl_req *q) {
    unsigned n = r->nchildren, limit = fo(r)->failover_count + 1;
    seq_dispatch(r, h, q, n ? (unsigned)(h->cfg->host_id % n) : 0, limit < n ? limit : n);
}

/* The child this host reads first (latest_dispatch()'s). */
static int latest_server_of(const struct route *r, const struct cellar_config *cfg,
                            const char *key, size_t nkey) {
    unsigned n = r->nchildren;
    return route_server_of(n ? r->children[cfg->host_id % n] : NULL, cfg, key, nkey);
}

/* Millionths as a decimal: 0.2, 9.8, 1000. */
static void put_micro(struct mc_put *w, uint64_t v) {
    mc_put_u64(w, v / MICRO);
    uint64_t frac = v % MICRO;
    if (frac == 0)
        return;
    char d[7];
    int n = 6;
    for (int i = 5; i >= 0; i--, frac /= 10)
        d[i] = (char)('0' + frac % 10);
    while (d[n - 1] == '0')
        n--;
    MC_PUT_LIT(w, ".");
    mc_put(w, d, (size_t)n);
}

static void failover_label(const struct route *r, const struct cellar_config *cfg,
                           struct mc_put *w) {
    (void)cfg;
    const struct failover *f = fo(r);
    bool limited = f->limit != NULL;
    bool any = f->exptime >= 0 || limited || f->custom || f->tag || f->max_tries || f->pairs;
    if (!any)
        return;
    const char *sep = "(";
    if (f->exptime >= 0) {
        MC_PUT_LIT(w, "(exptime=");
        mc_put_i64(w, f->exptime);
        sep = ",";
    }
    if (limited) {
        mc_put(w, sep, 1);
        MC_PUT_LIT(w, "failover_limit=");
        put_micro(w, f->limit->rate);
        MC_PUT_LIT(w, "/");
        put_micro(w, f->limit->burst);
        sep = ",";
    }
    if (f->tag) {
        mc_put(w, sep, 1);
        MC_PUT_LIT(w, "failover_tag");
        sep = ",";
    }
    if (f->pairs) {
        mc_put(w, sep, 1);
        MC_PUT_LIT(w, "lease_pairing");
        sep = ",";
    }
    if (f->max_tries) {
        mc_put(w, sep, 1);
        if (f->fails)
            MC_PUT_LIT(w, "least_failures,");
        if (f->det) {
            MC_PUT_LIT(w, "deterministic_order(");
            const char *kind = ring_kind(f->det->ring);
            mc_put(w, kind, strlen(kind));
            const char *end = f->det->domains ? ",failure_domains)," : "),";
            mc_put(w, end, strlen(end));
            MC_PUT_LIT(w, "max_error_tries=");
            mc_put_u64(w, f->det->max_error_tries);
            MC_PUT_LIT(w, ",");
        }
        MC_PUT_LIT(w, "max_tries=");
        mc_put_u64(w, f->max_tries);
        sep = ",";
    }
    if (f->custom) {
        mc_put(w, sep, 1);
        MC_PUT_LIT(w, "failover_errors=");
        for (int c = 0; c < FO_CLASSES; c++) {
            if (c)
                MC_PUT_LIT(w, "/");
            mc_put_u64(w, f->errors[c]);
        }
    }
    MC_PUT_LIT(w, ")");
}

static void latest_label(const struct route *r, const struct cellar_config *cfg,
                         struct mc_put *w) {
    (void)cfg;
    MC_PUT_LIT(w, "(failover_count=");
    mc_put_u64(w, fo(r)->failover_count);
    MC_PUT_LIT(w, ")");
}

static void failover_counters(const struct route *r,
                              void (*put)(void *arg, const char *name, uint64_t v), void *arg) {
    for (int i = 0; i < FS_COUNT; i++)
        put(arg, fs_names[i], atomic_load_explicit(&fo(r)->stat[i], memory_order_relaxed));
}

static void failover_release(struct route *r) {
    struct failover *f = (struct failover *)r;
    if (f->pairs) {
        pthread_mutex_destroy(&f->pairs->mu);
        free(f->pairs);
        f->pairs = NULL;
    }
    free((void *)f->fails);
    f->fails = NULL;
    if (f->det) {
        ring_destroy(&f->det->ring);
        free((void *)f->det->domain_of);
        free(f->det);
        f->det = NULL;
    }
    if (f->limit) {
        pthread_mutex_destroy(&f->limit->mu);
        free(f->limit);
        f->limit = NULL;
    }
}

static const struct route_ops failover_ops = {
    .name = "FailoverRoute",
    .dispatch = failover_dispatch,
    .server_of = route_server_of_first,
    .label = failover_label,
    .release = failover_release,
    .counters = failover_counters,
};

static const struct route_ops miss_failover_ops = {
    .name = "MissFailoverRoute",
    .dispatch = miss_failover_dispatch,
    .server_of = route_server_of_first,
};

static const struct route_ops latest_ops = {
    .name = "LatestRoute",
    .dispatch = latest_dispatch,
    .server_of = latest_server_of,
    .label = latest_label,
};

static struct failover *make(struct route_set *rs, const struct route_ops *ops,
                             struct route *const *children, unsigned n) {
    struct failover *f = (struct failover *)route_make(rs, ops, sizeof(*f), children, n);
    if (f)
        f->exptime = -1;
    return f;
}

struct route *route_failover(struct route_set *rs, struct route *const *children, unsigned n,
                             int failover_exptime) {
    struct failover *f = make(rs, &failover_ops, children, n);
    if (f) {
        f->exptime = failover_exptime < 0 ? -1 : failover_exptime;
        f->counts = true;
    }
    return f ? &f->r : NULL;
}

struct route *route_miss_failover(struct route_set *rs, struct route *const *children,
                                  unsigned n) {
    struct failover *f = make(rs, &miss_failover_ops, children, n);
    if (f)
        f->on_miss = true;
    return f ? &f->r : NULL;
}

struct route *route_latest(struct route_set *rs, struct route *const *children, unsigned n,
                           unsigned failover_count) {
    struct failover *f = make(rs, &latest_ops, children, n);
    if (f)
        f->failover_count = failover_count;
    return f ? &f->r : NULL;
}
