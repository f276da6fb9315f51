/*
 * tune.c -- `slabs` and `lru`: memcached's run-time knobs.
 *
 * Every form is checked and answered as memcached 1.6.18 answers it, and a
 * valid one updates the setting that `stats settings` shows.  `slabs
 * reassign` asks the engine's page mover for a move (engine_slabs_reassign(),
 * done by the maintenance step); `slabs automove` changes its rule and
 * ratio (level 3, the paper's age rule, only from -o slab_automove=3:
 * memcached answers ERROR above 2).  `lru tune` retunes the policy, `lru
 * temp_ttl` turns transient items on or off (engine_lru_temp()), and `lru
 * mode` switches memcached's flat-LRU tail pull on allocation
 * (engine_lru_flat()); the policy itself stays the one the engine started
 * with.  Settings change under srv->tune_lock, which `stats settings`
 * also takes.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "protocol/mc_num.h"
#include "server/conn.h"
#include "server/ctx.h"
#include "server/server.h"
#include "server/tune.h"

static void answer(struct conn *c, const struct mc_req *req, const char *s, size_t len) {
    if (!req->noreply)
        out_copy(&c->net.out, s, len);
}

/* safe_strtod: the whole token (or up to whitespace) is a double strtod accepts. */
bool tune_tok_f64(const struct mc_req *req, int i, double *out) {
    char buf[64];
    size_t n = req->tok[i].len;
    if (n == 0 || n >= sizeof(buf))
        return false;
    memcpy(buf, req->tok[i].p, n);
    buf[n] = '\0';
    char *end;
    errno = 0;
    double d = strtod(buf, &end);
    if (errno == ERANGE || end == buf || *end != '\0')
        return false;
    *out = d;
    return true;
}

/* safe_strtol: a number that fits a long, kept as memcached keeps it (in 32 bits). */
static bool tok_i32(const struct mc_req *req, int i, int32_t *out) {
    int64_t v;
    if (!mc_num_i64(req->tok[i].p, req->tok[i].len, &v))
        return false;
    *out = (int32_t)v;
    return true;
}

/* memcached's answers to slabs_reassign()'s results. */
static const char *reassign(struct engine *e, int32_t src, int32_t dst) {
    switch (engine_slabs_reassign(e, src, dst)) {
    case ENGINE_REASSIGN_OK:
        return "OK\r\n";
    case ENGINE_REASSIGN_RUNNING:
        return "BUSY currently processing reassign request\r\n";
    case ENGINE_REASSIGN_BADCLASS:
        return "BADCLASS invalid src or dst class id\r\n";
    case ENGINE_REASSIGN_NOSPARE:
        return "NOSPARE source class has no spare pages\r\n";
    case ENGINE_REASSIGN_SAME:
        return "SAME src and dst class are identical\r\n";
    }
    return "ERROR\r\n";
}

void tune_slabs(struct conn *c, const struct mc_req *req) {
    struct server *s = c->ctx->srv;
    const char *r = "ERROR\r\n";
    if (req->ntokens == 4 && mc_req_word_is(req, 1, "reassign")) {
        int32_t src, dst;
        if (!s->cfg->slab_reassign)
            r = "CLIENT_ERROR slab reassignment disabled\r\n";
        else if (!tok_i32(req, 2, &src) || !tok_i32(req, 3, &dst))
            r = "CLIENT_ERROR bad command line format\r\n";
        else
            r = reassign(s->engine, src, dst);
        answer(c, req, r, strlen(r));       /* the codec takes no noreply here */
        return;
    }
    if (req->ntokens >= 3 && mc_req_word_is(req, 1, "automove")) {
        double ratio;
        uint64_t level;
        pthread_mutex_lock(&s->tune_lock);
        if (mc_req_word_is(req, 2, "ratio")) {
            if (req->ntokens >= 4 && tune_tok_f64(req, 3, &ratio)) {
                s->cfg->slab_automove_ratio = ratio;
                engine_automove_set(s->engine, s->cfg->slab_reassign ? s->cfg->slab_automove : 0, ratio,
                                    s->cfg->slab_automove_window);
                r = "OK\r\n";
            }
        } else if (!mc_num_u64(req->tok[2].p, req->tok[2].len, &level)) {
            r = "CLIENT_ERROR bad command line format\r\n";
        } else if (level <= 2) {
            s->cfg->slab_automove = (int)level;
            engine_automove_set(s->engine, s->cfg->slab_reassign ? (int)level : 0,
                                s->cfg->slab_automove_ratio,
                                s->cfg->slab_automove_window);
            r = "OK\r\n";
        }
        pthread_mutex_unlock(&s->tune_lock);
    }
    answer(c, req, r, strlen(r));
}

void tune_lru(struct conn *c, const struct mc_req *req) {
    struct server *s = c->ctx->srv;
    struct settings *cfg = s->cfg;
    const char *r = "ERROR\r\n";
    pthread_mutex_lock(&s->tune_lock);
    if (mc_req_word_is(req, 1, "tune") && req->ntokens >= 6) {
        uint64_t hot, warm;
        double hot_factor, factor;
        if (!mc_num_u64(req->tok[2].p, req->tok[2].len, &hot) ||
            !mc_num_u64(req->tok[3].p, req->tok[3].len, &warm) || !tune_tok_f64(req, 4, &hot_factor) ||
            !tune_tok_f64(req, 5, &factor)) {
            r = "ERROR\r\n";
        } else if (hot + warm > 80) {
            r = "ERROR hot and warm pcts must not exceed 80\r\n";
        } else if (factor <= 0 || hot_factor <= 0) {
            r = "ERROR hot/warm age factors must be greater than 0\r\n";
        } else {
            cfg->hot_lru_pct = (int)hot;
            cfg->warm_lru_pct = (int)warm;
            cfg->hot_max_factor = hot_factor;
            cfg->warm_max_factor = factor;
            struct evict_tune t = server_lru_tune(cfg);
            engine_lru_tune(s->engine, &t);
            r = "OK\r\n";
        }
    } else if (mc_req_word_is(req, 1, "mode") && req->ntokens >= 3 && cfg->lru_maintainer_thread) {
        if (mc_req_word_is(req, 2, "flat") || mc_req_word_is(req, 2, "segmented")) {
            cfg->lru_segmented = mc_req_word_is(req, 2, "segmented");
            engine_lru_flat(s->engine, !cfg->lru_segmented);
            r = "OK\r\n";
        }
    } else if (mc_req_word_is(req, 1, "temp_ttl") && req->ntokens >= 3 && cfg->lru_maintainer_thread) {
        int32_t ttl;
        if (tok_i32(req, 2, &ttl)) {
            cfg->temp_lru = ttl >= 0;
            if (ttl >= 0)
                cfg->temporary_ttl = ttl;
            engine_lru_temp(s->engine, ttl);
            r = "OK\r\n";
        }
    }
    pthread_mutex_unlock(&s->tune_lock);
    answer(c, req, r, strlen(r));
}
