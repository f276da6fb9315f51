/*
 * route_big_value.c -- BigValueRoute: values larger than split_threshold
 * stored as pieces under keys of their own, as mcrouter stores them, so
 * that a cache whose items are limited in size still takes them, and so
 * that mcrouter and cellar read each other's:
 *
 *   set k (n bytes > T)   pieces "k:0:S" .. "k:N-1:S" (T bytes each, the
 *                         last the rest; the request's flags and exptime),
 *                         then k itself: flags | 0x8000, value "1-N-S",
 *                         where S is the low 32 bits of the value's
 *                         SpookyHash V2 (128, seeds 0); a piece not stored
 *                         is the answer, and k is not written
 *   get k                 k's item with flag 0x8000 and a value "1-N-S":
 *                         the N pieces, joined (any piece missing: a
 *                         miss); a value not of that form: a miss
 *
 * set, add, replace, cas and lease-set split (the lease's token on the
 * key's own store); get, gets, gat, gats and a lease-get's hit join; the rest
 * (and a value at most T) go to the target as they are; a value of more
 * than PIECES_MAX pieces is refused as too large.  The flag stays
 * in the answer's flags unless hide_reply_flag.  At most batch_size pieces
 * of a request are in flight at once (0: all).
 */
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/client_int.h"
#include "client/route_build.h"
#include "core/hash.h"
#include "protocol/mc_put.h"

#define BIG_FLAG 0x8000u        /* mcrouter's MC_MSG_FLAG_BIG_VALUE */
#define PIECES_MAX 10000        /* more pieces: a set is refused, a get a miss */

struct big {
    struct route r;             /* children[0]: the target */
    size_t threshold;
    unsigned batch;             /* pieces in flight at most (0: all) */
    bool hide_flag;
};

static const struct big *bg(const struct route *r) {
    return (const struct big *)r;
}

struct piece {
    struct cl_req q;            /* first, so done() finds the piece */
    struct job *j;
    char *val;                  /* a get's piece, copied */
    size_t len;
};

/* One request's pieces in flight, then (a set) its main key's store. */
struct job {
    struct cl_req *parent;
    struct cellar *h;
    const struct route *r;
    unsigned n, left;
    unsigned next;              /* the next piece to send */
    bool pumping;               /* pump() is sending: a piece done meanwhile waits for it */
    void (*finish)(struct job *j);  /* once every piece is done */
    int worst;                  /* the worst status of the pieces */
    struct msg_reply main;      /* a get: the main key's reply (flags, cas; no spans) */
    struct cl_req last;         /* a set: the main key's store */
    char info[48];              /* "1-N-S" */
    char *keys;                 /* the pieces' keys, each MC_KEY_MAX + 32 bytes apart */
    struct piece p[];
};

#define KEY_ROOM (MC_KEY_MAX + 32)

static int badness(int status) {
    return status < 0 ? 2 : status > 0 ? 1 : 0;
}

static void job_free(struct job *j) {
    for (unsigned i = 0; i < j->n; i++)
        free(j->p[i].val);
    free(j->keys);
    free(j);
}

static struct job *job_new(struct cellar *h, const struct route *r, struct cl_req *parent,
                           unsigned n) {
    struct job *j = calloc(1, sizeof(*j) + n * sizeof(j->p[0]));
    if (j == NULL)
        return NULL;
    j->keys = malloc((size_t)n * KEY_ROOM);
    if (j->keys == NULL) {
        free(j);
        return NULL;
    }
    j->parent = parent;
    j->h = h;
    j->r = r;
    j->n = j->left = n;
    return j;
}

/* Piece i's key, "k:i:S", into the job's room for it. */
static struct mc_span piece_key(struct job *j, unsigned i, struct mc_span k, uint64_t suffix) {
    char *p = j->keys + (size_t)i * KEY_ROOM;
    int n = snprintf(p, KEY_ROOM, "%.*s:%u:%" PRIu64, (int)k.len, k.p, i, suffix);
    return (struct mc_span){p, n > 0 && n < KEY_ROOM ? (size_t)n : 0};
}

static void answer(struct job *j, int status, const struct msg_reply *rep) {
    struct cl_req *parent = j->parent;
    job_free(j);
    parent->done(parent, status, rep);
}

/* ---- reads ------------------------------------------------------------- */

static void pump(struct job *j);

/* A piece is done: the next goes, or (the last) the job finishes. */
static void piece_done(struct job *j) {
    j->left--;
    if (j->pumping)
        return;                 /* pump() goes on, and finishes the job */
    if (j->left == 0)
        j->finish(j);
    else
        pump(j);
}

/* Sends pieces while fewer than batch are in flight; finishes the job when all are done. */
static void pump(struct job *j) {
    unsigned batch = bg(j->r)->batch;
    j->pumping = true;
    while (j->next < j->n && (batch == 0 || j->next - (j->n - j->left) < batch)) {
        unsigned i = j->next++;
        route_dispatch(j->r->children[0], j->h, &j->p[i].q);
    }
    j->pumping = false;
    if (j->left == 0)
        j->finish(j);
}

static void get_finish(struct job *j) {
    if (j->worst != CELLAR_OK) {
        struct cl_req *parent = j->parent;
        int worst = j->worst;
        job_free(j);
        if (worst > 0)
            cl_answer_null(parent);
        else
            parent->done(parent, worst, NULL);
        return;
    }
    size_t total = 0;
    for (unsigned i = 0; i < j->n; i++)
        total += j->p[i].len;
    char *all = malloc(total ? total : 1);
    if (all == NULL) {
        answer(j, CELLAR_ENOMEM, NULL);
        return;
    }
    for (size_t i = 0, off = 0; i < j->n; off += j->p[i].len, i++)
        if (j->p[i].len)
            memcpy(all + off, j->p[i].val, j->p[i].len);
    struct msg_reply out = j->main;
    out.value = (struct mc_span){all, total};
    answer(j, CELLAR_OK, &out);
    free(all);
}

static void get_piece_done(struct cl_req *q, int status, const struct msg_reply *rep) {
    struct piece *pc = (struct piece *)q;
    struct job *j = pc->j;
    bool hit = status == CELLAR_OK && rep && rep->res == MSG_RES_HIT;
    int bad = hit ? CELLAR_OK : status ? status : CELLAR_NOT_FOUND;
    if (badness(bad) > badness(j->worst))
        j->worst = bad;
    if (hit && rep->value.len) {
        if ((pc->val = malloc(rep->value.len)) != NULL) {
            memcpy(pc->val, rep->value.p, rep->value.len);
            pc->len = rep->value.len;
        } else {
            j->worst = CELLAR_ENOMEM;
        }
    }
    piece_done(j);
}

/* "1-N-S" into *n and *suffix. */
static bool parse_info(struct mc_span v, unsigned *n, uint64_t *suffix) {
    char buf[48];
    if (v.len == 0 || v.len >= sizeof(buf))
        return false;
    memcpy(buf, v.p, v.len);
    buf[v.len] = '\0';
    unsigned version, count;
    uint64_t s;
    char tail;
    if (sscanf(buf, "%u-%u-%" SCNu64 "%c", &version, &count, &s, &tail) != 3 || version != 1 ||
        count == 0 || count > PIECES_MAX)
        return false;
    *n = count;
    *suffix = s;
    return true;
}

static void get_head_done(struct cl_req *q, int status, const struct msg_reply *rep) {
    struct cl_child *hd = (struct cl_child *)q;
    struct cl_req *parent = hd->parent;
    struct cellar *h = hd->h;
    const struct route *r = hd->r;
    cl_block_put(h, hd);
    if (status != CELLAR_OK || rep == NULL || rep->res != MSG_RES_HIT ||
        !(rep->flags & BIG_FLAG) || rep->won || rep->token_sent) {
        parent->done(parent, status, rep);
        return;
    }
    unsigned n;
    uint64_t suffix;
    struct job *j;
    if (!parse_info(rep->value, &n, &suffix)) {
        cl_answer_null(parent);         /* mcrouter's answer to a broken one: a miss */
        return;
    }
    if ((j = job_new(h, r, parent, n)) == NULL) {
        parent->done(parent, CELLAR_ENOMEM, NULL);
        return;
    }
    j->main = *rep;
    j->main.value = j->main.msg = (struct mc_span){0};
    if (bg(r)->hide_flag)
        j->main.flags &= ~BIG_FLAG;
    for (unsigned i = 0; i < n; i++)
        j->p[i] = (struct piece){.q = {.m = {.op = MSG_GET, .key = piece_key(j, i, parent->m.key,
                                                                             suffix)},
                                       .done = get_piece_done},
                                 .j = j};
    j->finish = get_finish;
    pump(j);                            /* the job may be freed in it: nothing after */
}

/* ---- writes ------------------------------------------------------------ */

static void set_last_done(struct cl_req *q, int status, const struct msg_reply *rep) {
    struct job *j = (struct job *)((char *)q - offsetof(struct job, last));
    answer(j, status, rep);
}

static void set_finish(struct job *j) {
    if (j->worst != CELLAR_OK) {
        struct msg_reply r = {.res = j->worst > 0 ? MSG_RES_NOT_STORED : MSG_RES_NONE, .ttl = -1};
        answer(j, j->worst, j->worst > 0 ? &r : NULL);
        return;
    }
    j->last = (struct cl_req){.m = j->parent->m, .done = set_last_done};
    j->last.m.flags |= BIG_FLAG;
    j->last.m.value = (struct mc_span){j->info, strlen(j->info)};
    route_dispatch(j->r->children[0], j->h, &j->last);
}

static void set_piece_done(struct cl_req *q, int status, const struct msg_reply *rep) {
    (void)rep;
    struct job *j = ((struct piece *)q)->j;
    if (badness(status) > badness(j->worst))
        j->worst = status;
    piece_done(j);
}

static void split(const struct route *r, struct cellar *h, struct cl_req *q) {
    size_t t = bg(r)->threshold, len = q->m.value.len;
    unsigned n = (unsigned)((len + t - 1) / t);
    uint64_t h1 = 0, h2 = 0;
    hash_spooky128(q->m.value.p, len, &h1, &h2);
    uint64_t suffix = h1 & 0xffffffffu;
    if (n > PIECES_MAX) {
        static const char why[] = "object too large for cache";   /* memcached's words */
        cl_answer_error(h, q, CELLAR_ESERVER, why, sizeof(why) - 1);
        return;
    }
    struct job *j = job_new(h, r, q, n);
    if (j == NULL) {
        q->done(q, CELLAR_ENOMEM, NULL);
        return;
    }
    snprintf(j->info, sizeof(j->info), "1-%u-%" PRIu64, n, suffix);
    for (unsigned i = 0; i < n; i++) {
        size_t off = (size_t)i * t, part = len - off < t ? len - off : t;
        j->p[i] = (struct piece){.q = {.m = {.op = MSG_SET,
                                             .key = piece_key(j, i, q->m.key, suffix),
                                             .value = {q->m.value.p + off, part},
                                             .flags = q->m.flags, .exptime = q->m.exptime},
                                       .done = set_piece_done},
                                 .j = j};
    }
    j->finish = set_finish;
    pump(j);
}

static void big_dispatch(const struct route *r, struct cellar *h, struct cl_req *q) {
    enum msg_op op = q->m.op;
    if ((op == MSG_SET || op == MSG_ADD || op == MSG_REPLACE || op == MSG_CAS ||
         op == MSG_LEASE_SET) && q->m.value.len > bg(r)->threshold) {
        split(r, h, q);
        return;
    }
    if (op != MSG_GET && op != MSG_GETS && op != MSG_GAT && op != MSG_GATS &&
        op != MSG_LEASE_GET) {
        route_dispatch(r->children[0], h, q);
        return;
    }
    struct cl_child *hd = cl_child_get(h, r, q, get_head_done);
    if (hd != NULL)
        route_dispatch(r->children[0], h, &hd->q);
}

static void big_label(const struct route *r, const struct cellar_config *cfg,
                      struct mc_put *w) {
    (void)cfg;
    MC_PUT_LIT(w, "(split_threshold=");
    mc_put_u64(w, bg(r)->threshold);
    MC_PUT_LIT(w, ")");
}

static const struct route_ops big_ops = {
    .name = "BigValueRoute",
    .dispatch = big_dispatch,
    .server_of = route_server_of_first,
    .label = big_label,
};

struct route *route_big_value(struct route_set *rs, struct route *target, size_t threshold,
                              unsigned batch, bool hide_flag) {
    struct route *r = route_make(rs, &big_ops, sizeof(struct big), &target, 1);
    if (r) {
        ((struct big *)r)->threshold = threshold ? threshold : 1;
        ((struct big *)r)->batch = batch;
        ((struct big *)r)->hide_flag = hide_flag;
    }
    return r;
}

/*
 * {"type": "BigValueRoute", "target": route, "split_threshold": INT >= 1,
 *  "batch_size": INT (0: all), "hide_reply_flag": BOOL}
 */
static int build_big_value(struct rb *b, const struct route_type *t, json_t *obj,
                           struct route **out) {
    (void)t;
    struct route *target = NULL;
    long long threshold, batch;
    if (rb_build_key(b, obj, "target", true, &target) < 0 ||
        rb_need(b, obj, "split_threshold") == NULL ||
        rb_get_int(b, obj, "split_threshold", 1, INT32_MAX, 1, &threshold) < 0 ||
        rb_need(b, obj, "batch_size") == NULL ||
        rb_get_int(b, obj, "batch_size", 0, INT32_MAX, 0, &batch) < 0)
        return -1;
    json_t *hide = json_object_get(obj, "hide_reply_flag");
    if (hide && !json_is_boolean(hide)) {
        rb_path_key(b, "hide_reply_flag");
        return rb_fail(b, "expected true or false");
    }
    *out = route_big_value(b->cfg->routes, target, (size_t)threshold, (unsigned)batch,
                           json_is_true(hide));
    return *out ? 0 : rb_nomem(b);
}

const struct route_type route_type_big_value = {
    .type = "BigValueRoute",
    .keys = "target split_threshold batch_size hide_reply_flag",
    .route_keys = "target",
    .map_keys = "",
    .pool_keys = "",
    .build = build_big_value,
};
